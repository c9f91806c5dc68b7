-- measures-by-status: 1 statement(s)
-- parameters: []
SELECT "orders".status AS "orders__status", COUNT("orders".id) AS "orders__count", SUM("orders".amount) AS "orders__revenue", AVG("orders".amount) AS "orders__average_amount", COUNT(DISTINCT "orders".user_id) AS "orders__customers" FROM orders AS "orders" GROUP BY 1 ORDER BY 2 DESC, 1 ASC OFFSET 1 LIMIT 3;
-- total (same parameters)
SELECT COUNT(*) AS total_count FROM (SELECT "orders".status AS "orders__status", COUNT("orders".id) AS "orders__count", SUM("orders".amount) AS "orders__revenue", AVG("orders".amount) AS "orders__average_amount", COUNT(DISTINCT "orders".user_id) AS "orders__customers" FROM orders AS "orders" GROUP BY 1) AS original_query;
