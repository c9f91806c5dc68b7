-- filter-in: 1 statement(s)
-- parameters: [5, 10, 300]
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ("orders".amount IN (?, ?, ?)) ORDER BY 1 ASC LIMIT 10000;
