-- filter-endswith: 1 statement(s)
-- parameters: ['%ED']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ("orders".status ILIKE :1 ESCAPE '\\') ORDER BY 1 ASC LIMIT 10000;
