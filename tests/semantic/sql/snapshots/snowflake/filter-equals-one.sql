-- filter-equals-one: 1 statement(s)
-- parameters: ['shipped']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ("orders".status = :1) ORDER BY 1 ASC LIMIT 10000;
