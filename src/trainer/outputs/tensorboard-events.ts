import protobuf from 'protobufjs';

/**
 * The messages of a TensorBoard event file, as far as teamtr writes them. Field names and
 * numbers follow TensorFlow's `tensorflow/core/util/event.proto`,
 * `tensorflow/core/framework/summary.proto`, `tensor.proto` and `tensor_shape.proto`: an Event
 * carries a wall time, a step and either the file's version or a Summary of tagged values. A
 * scalar is a `simple_value`; a text is a string tensor marked for TensorBoard's "text" plugin.
 */
const schema = `
syntax = "proto3";
package tensorboard;

message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what {
    string file_version = 3;
    Summary summary = 5;
  }
}
message Summary { repeated SummaryValue value = 1; }
message SummaryValue {
  string tag = 1;
  oneof value {
    float simple_value = 2;
    TensorProto tensor = 8;
  }
  SummaryMetadata metadata = 9;
}
message SummaryMetadata { PluginData plugin_data = 1; }
message PluginData {
  string plugin_name = 1;
  bytes content = 2;
}
message TensorProto {
  int32 dtype = 1;
  TensorShapeProto tensor_shape = 2;
  repeated bytes string_val = 8;
}
message TensorShapeProto { repeated Dim dim = 2; }
message Dim { int64 size = 1; }
`;

/** Read by protobufjs's parser, which names the fields in camel case (wallTime, simpleValue, …). */
const root = protobuf.parse(schema).root;
const eventType = root.lookupType('tensorboard.Event');

/** TensorFlow's DataType DT_STRING. */
const stringDataType = 7;

/** The file_version of every event file TensorBoard reads today. */
export const eventFileVersion = 'brain.Event:2';

/** One value of a summary: a scalar, or a text (markdown) shown by the text plugin. */
export type SummaryEntry = { tag: string; scalar: number } | { tag: string; text: string };

/** An event as teamtr writes and reads it. */
export interface TensorboardEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  values?: SummaryEntry[];
}

export function encodeEvent(event: TensorboardEvent): Uint8Array {
  const message = {
    wallTime: event.wallTime,
    step: event.step,
    ...(event.fileVersion !== undefined ? { fileVersion: event.fileVersion } : {}),
    ...(event.values ? { summary: { value: event.values.map(encodeValue) } } : {}),
  };
  return eventType.encode(eventType.fromObject(message)).finish();
}

function encodeValue(entry: SummaryEntry): object {
  if ('scalar' in entry) return { tag: entry.tag, simpleValue: entry.scalar };
  return {
    tag: entry.tag,
    metadata: { pluginData: { pluginName: 'text' } },
    tensor: {
      dtype: stringDataType,
      tensorShape: { dim: [{ size: 1 }] },
      stringVal: [new TextEncoder().encode(entry.text)],
    },
  };
}

interface DecodedEvent {
  wallTime?: number;
  step?: number | { toNumber(): number };
  fileVersion?: string;
  summary?: {
    value?: Array<{ tag?: string; simpleValue?: number; tensor?: { stringVal?: Uint8Array[] } }>;
  };
}

export function decodeEvent(bytes: Uint8Array): TensorboardEvent {
  const decoded = eventType.toObject(eventType.decode(bytes), {
    longs: Number,
    oneofs: false,
  }) as DecodedEvent;
  const step = typeof decoded.step === 'number' ? decoded.step : (decoded.step?.toNumber() ?? 0);
  return {
    wallTime: decoded.wallTime ?? 0,
    step,
    ...(decoded.fileVersion ? { fileVersion: decoded.fileVersion } : {}),
    ...(decoded.summary
      ? {
          values: (decoded.summary.value ?? []).map((value) =>
            value.tensor
              ? {
                  tag: value.tag ?? '',
                  text: new TextDecoder().decode(value.tensor.stringVal?.[0] ?? new Uint8Array()),
                }
              : { tag: value.tag ?? '', scalar: value.simpleValue ?? 0 },
          ),
        }
      : {}),
  };
}
