// Helpers the cubes import: a money format and the statuses an order goes through.
export const usd = { format: `currency`, currency: `USD` };
export const statuses = [`completed`, `shipped`, `processing`, `cancelled`, `returned`];
export const countOf = (status) => ({
  type: `count`,
  filters: [{ sql: (CUBE) => `${CUBE}.status = '${status}'` }],
});
