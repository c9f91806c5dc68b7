// A base cube, and a child with its own sql: Cube drops the parent's sqlTable for it.
cube(`users`, {
  sqlTable: `users`,
  measures: {
    count: { type: `count` },
    average_age: { sql: `age`, type: `avg` },
  },
  dimensions: {
    id: { sql: `id`, type: `number`, primaryKey: true },
    country: { sql: `country`, type: `string` },
    gender: { sql: `gender`, type: `string` },
    full_name: { sql: `${CUBE}.first_name || ' ' || ${CUBE}.last_name`, type: `string` },
  },
});

cube(`young_users`, {
  extends: users,
  sql: `SELECT * FROM ${users.sql()} AS u WHERE u.age < 30`,
  dimensions: {
    age: { sql: `age`, type: `number` },
  },
});
