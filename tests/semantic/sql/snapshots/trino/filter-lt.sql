-- filter-lt: 1 statement(s)
-- parameters: [15]
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ("orders".amount < ?) ORDER BY 1 ASC LIMIT 10000;
