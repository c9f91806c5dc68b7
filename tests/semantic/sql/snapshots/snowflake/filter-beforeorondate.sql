-- filter-beforeorondate: 1 statement(s)
-- parameters: ['2024-02-01T04:59:59.999Z']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ("orders".created_at <= CAST(:1 AS TIMESTAMP_TZ)) ORDER BY 1 ASC LIMIT 10000;
