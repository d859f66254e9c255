import { getBackend } from './backend/index.js';
import { benchmarkSmolLMShape } from './bench/real-model.js';
console.log(getBackend().description);
const start = Date.now();
for (const r of benchmarkSmolLMShape({ repeats: 3, warmup: 1 })) console.log(JSON.stringify(r));
console.log('total seconds', (Date.now() - start) / 1000);
