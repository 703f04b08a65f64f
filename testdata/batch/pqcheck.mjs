// Reads a Parquet file with two independent readers (DuckDB and hyparquet)
// and prints {"duckdb": [...rows], "hyparquet": [...rows]} as JSON.
// Usage: NODE_PATH=<dir with node_modules> node pqcheck.mjs FILE
// Used by batch's TestParquetIndependentReaders when ZENMETRICS_PQCHECK
// names a folder where
// `npm install @duckdb/node-api hyparquet hyparquet-compressors` was run
// (hyparquet reads only uncompressed and Snappy pages by itself; the
// batch writes zstd).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.env.ZENMETRICS_PQCHECK;
const require = createRequire(path.join(dir, 'package.json'));
const file = process.argv[2];
const out = {};

const { DuckDBInstance } = require('@duckdb/node-api');
const inst = await DuckDBInstance.create(':memory:');
const conn = await inst.connect();
const reader = await conn.runAndReadAll(
  `SELECT id, ref, dist, metric, score, extras, backend, ms, error FROM read_parquet('${file.replaceAll("'", "''")}')`);
out.duckdb = reader.getRowObjectsJson();
const desc = await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file.replaceAll("'", "''")}')`);
out.duckdb_schema = desc.getRowObjectsJson().map(r => `${r.column_name}:${r.column_type}`);

const hyp = await import(path.join(dir, 'node_modules/hyparquet/src/index.js'));
const buf = readFileSync(file);
const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
const { compressors } = await import(path.join(dir, 'node_modules/hyparquet-compressors/src/index.js'));
out.hyparquet = await hyp.parquetReadObjects({ file: ab, compressors });
console.log(JSON.stringify(out, (k, v) => typeof v === 'bigint' ? Number(v) : v));
