-- filter-notin: 1 statement(s)
-- parameters: ['completed', 'shipped']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE (NOT "orders".status IN (:1, :2) OR "orders".status IS NULL) ORDER BY 1 ASC LIMIT 10000;
