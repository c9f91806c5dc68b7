-- demo-average-by-size: 1 statement(s)
-- parameters: []
SELECT CASE WHEN "orders".amount < 50 THEN 'Small' WHEN "orders".amount < 250 THEN 'Medium' ELSE 'Large' END AS "orders__size", AVG("orders".amount) AS "orders__average_order_value" FROM orders AS "orders" GROUP BY 1 ORDER BY 1 ASC LIMIT 10000;
