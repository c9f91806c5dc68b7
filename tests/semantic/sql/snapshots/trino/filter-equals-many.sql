-- filter-equals-many: 1 statement(s)
-- parameters: ['shipped', 'cancelled']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ("orders".status IN (?, ?)) ORDER BY 1 ASC LIMIT 10000;
