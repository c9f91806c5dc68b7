-- filter-beforedate: 1 statement(s)
-- parameters: ['2024-02-01T04:30:00.000Z']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ("orders".created_at < CAST(:1 AS TIMESTAMP_TZ)) ORDER BY 1 ASC LIMIT 10000;
