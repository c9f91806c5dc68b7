-- composite-and-filtered-measures: 1 statement(s)
-- parameters: []
SELECT 1.0 * COUNT(CASE WHEN ("orders".status = 'completed') THEN "orders".id END) / NULLIF(COUNT("orders".id), 0) AS "orders__completed_share", COUNT(CASE WHEN ("orders".status = 'completed') THEN "orders".id END) AS "orders__completed_count", MAX("orders".amount) AS "orders__max_amount", MIN("orders".created_at) AS "orders__min_created" FROM orders AS "orders" ORDER BY 1 DESC LIMIT 10000;
