-- filter-onthedate: 1 statement(s)
-- parameters: ['2024-03-31T04:00:00.000Z', '2024-04-01T03:59:59.999Z']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ("orders".created_at >= CAST(:1 AS TIMESTAMP_TZ) AND "orders".created_at <= CAST(:2 AS TIMESTAMP_TZ)) ORDER BY 1 ASC LIMIT 10000;
