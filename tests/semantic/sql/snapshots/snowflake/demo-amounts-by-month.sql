-- demo-amounts-by-month: 1 statement(s)
-- parameters: ['2024-01-01T00:00:00.000Z', '2024-12-31T23:59:59.999Z']
SELECT DATE_TRUNC('MONTH', CAST(CONVERT_TIMEZONE('UTC', CAST("orders".created_at AS TIMESTAMP_TZ)) AS TIMESTAMP_NTZ)) AS "orders__created_at_month", SUM("orders".amount) AS "orders__total_amount", SUM(CASE WHEN ("orders".status = 'completed') THEN "orders".amount END) AS "orders__completed_amount" FROM orders AS "orders" WHERE ("orders".created_at >= CAST(:1 AS TIMESTAMP_TZ) AND "orders".created_at <= CAST(:2 AS TIMESTAMP_TZ)) GROUP BY 1 ORDER BY 1 ASC LIMIT 10000;
