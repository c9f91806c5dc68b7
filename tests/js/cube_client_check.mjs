// Drives a live embedadmin server with Cube's official client and prints one JSON document of what it saw.
// Usage: CUBE_API_URL=http://127.0.0.1:PORT/cubejs-api/v1 CUBE_TOKEN=<jwt> CUBE_QUERY='<json>' node cube_client_check.mjs
import cubeModule from '@cubejs-client/core';

const cube = cubeModule.default ?? cubeModule;
const apiUrl = process.env.CUBE_API_URL;
const token = process.env.CUBE_TOKEN;
const query = JSON.parse(process.env.CUBE_QUERY);
if (!apiUrl || !token) {
  console.error('CUBE_API_URL and CUBE_TOKEN are required');
  process.exit(2);
}

const api = cube(token, { apiUrl });
const out = {};
try {
  const meta = await api.meta();
  out.metaCubes = meta.cubes.map((c) => ({ name: c.name, type: c.type }));
  out.metaMembers = meta.membersForQuery(null, 'measures').map((m) => m.name);
  const resultSet = await api.load(query);
  out.tablePivot = resultSet.tablePivot();
  out.chartPivot = resultSet.chartPivot();
  out.tableColumns = resultSet.tableColumns().map((c) => ({ key: c.key, type: c.type }));
  out.rawData = resultSet.rawData();
  const sql = await api.sql(query);
  out.sql = sql.sql();
  try {
    await api.load({ measures: ['NoSuchCube.count'] });
    out.badQueryError = null;
  } catch (error) {
    out.badQueryError = String(error.message ?? error);
  }
} catch (error) {
  out.fatal = String(error.stack ?? error);
}
console.log(JSON.stringify(out));
