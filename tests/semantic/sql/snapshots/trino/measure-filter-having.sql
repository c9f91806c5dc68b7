-- measure-filter-having: 1 statement(s)
-- parameters: [2]
SELECT "orders".status AS "orders__status", COUNT("orders".id) AS "orders__count" FROM orders AS "orders" GROUP BY 1 HAVING (COUNT("orders".id) >= ?) ORDER BY 2 DESC LIMIT 10000;
