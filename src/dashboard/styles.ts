/** The dashboard's stylesheet, served as /assets/dashboard.css. */
export const dashboardStyles = `
:root {
  color-scheme: light;
  --text: #1f2937;
  --muted: #6b7280;
  --line: #e5e7eb;
  --panel: #ffffff;
  --page: #f3f4f6;
  --ok: #059669;
  --warn: #b45309;
  --bad: #b91c1c;
}
* { box-sizing: border-box; }
body {
  margin: 0;
  font: 14px/1.5 system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif;
  color: var(--text);
  background: var(--page);
}
header.top {
  display: flex; align-items: center; justify-content: space-between; gap: 16px;
  background: #111827; color: #f9fafb; padding: 14px 28px;
  position: sticky; top: 0; z-index: 10;
}
header.top h1 { margin: 0; font-size: 20px; font-weight: 600; letter-spacing: 0.2px; }
header.top p { margin: 2px 0 0; color: #9ca3af; font-size: 13px; }
.live { display: flex; align-items: center; gap: 8px; font-size: 13px; color: #d1d5db; white-space: nowrap; }
.live .dot { width: 9px; height: 9px; border-radius: 50%; background: #6b7280; }
.live.ok .dot { background: #34d399; box-shadow: 0 0 0 3px rgba(52, 211, 153, 0.25); }
.live.error .dot { background: #f87171; }
main { padding: 8px 28px 40px; max-width: 1800px; margin: 0 auto; }
h2 { font-size: 16px; margin: 22px 0 10px; color: #111827; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 14px; }
.card, .panel {
  background: var(--panel); border: 1px solid var(--line); border-radius: 10px;
  box-shadow: 0 1px 2px rgba(17, 24, 39, 0.05);
}
.card { padding: 14px 16px; }
.card .title { display: flex; align-items: center; gap: 8px; font-weight: 600; font-size: 15px; }
.card .swatch { width: 12px; height: 12px; border-radius: 3px; flex: none; }
.card .directory { color: var(--muted); font: 11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; overflow-wrap: anywhere; margin: 2px 0 8px; }
.badge { margin-left: auto; font-size: 11px; font-weight: 600; text-transform: uppercase; letter-spacing: 0.4px; padding: 2px 8px; border-radius: 999px; }
.badge.running { background: #dbeafe; color: #1d4ed8; }
.badge.finished { background: #d1fae5; color: #047857; }
.badge.stopped { background: #fee2e2; color: #b91c1c; }
.badge.interrupted { background: #fef3c7; color: #92400e; }
.badge.damaged { background: #e5e7eb; color: #374151; }
.card .damage { color: #b91c1c; font-size: 12px; margin-top: 6px; overflow-wrap: anywhere; }
.progress { height: 6px; background: var(--line); border-radius: 3px; overflow: hidden; margin: 4px 0 10px; }
.progress > div { height: 100%; background: #0072b2; }
.stats { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 10px 14px; margin: 0; }
.stats dt { color: var(--muted); font-size: 11.5px; }
.stats dd { margin: 0; font-variant-numeric: tabular-nums; font-weight: 600; font-size: 14px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 560px), 1fr)); gap: 16px; }
.panel { padding: 14px 16px 12px; min-width: 0; }
.panel h3 { margin: 0; font-size: 15px; }
.panel .description { margin: 2px 0 8px; color: var(--muted); font-size: 12.5px; }
.panel .chart { min-height: 300px; }
.panel .empty {
  height: 300px; display: flex; align-items: center; justify-content: center;
  color: var(--muted); background: #f9fafb; border: 1px dashed var(--line); border-radius: 8px;
}
.panel ul.notes { margin: 8px 0 0; padding-left: 18px; color: var(--muted); font-size: 12.5px; }
.u-legend { font-size: 12px; text-align: left; margin-top: 4px; }
.u-legend.u-inline .u-series { margin-right: 4px; }
.u-legend .u-series th { font-weight: 500; }
.u-legend .u-marker { width: 11px; height: 11px; margin-right: 6px; }
.u-axis { color: var(--muted); }
table { border-collapse: collapse; width: 100%; font-size: 13px; background: var(--panel); }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #f9fafb; font-weight: 600; position: sticky; top: 0; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
tr.differs td { background: #fffbeb; }
.scroll { overflow: auto; border: 1px solid var(--line); border-radius: 10px; max-height: 520px; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.muted { color: var(--muted); }
.bad { color: var(--bad); font-weight: 600; }
@media (max-width: 640px) {
  header.top { padding: 12px 14px; }
  main { padding: 4px 12px 32px; }
  .stats { grid-template-columns: repeat(2, minmax(0, 1fr)); }
}
.muted { color: var(--muted); }
.transcript-controls { display: flex; gap: 16px; margin-bottom: 8px; }
.transcript { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; margin-bottom: 10px; }
.transcript-head { font-weight: 600; }
.turn { margin-top: 6px; }
.turn-head { color: var(--muted); font-size: 12px; }
.turn-text { margin: 2px 0 0; white-space: pre-wrap; font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
`;
