/** A live, read-only web view of training runs (`teamtr dashboard`). */
export {
  startDashboard,
  defaultDashboardPort,
  type DashboardOptions,
  type DashboardServer,
} from './server.js';
