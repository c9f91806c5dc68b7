-- filter-notindaterange: 1 statement(s)
-- parameters: ['2024-01-01T05:00:00.000Z', '2024-10-27T03:59:59.999Z']
SELECT "orders".amount AS "orders__amount", 1 AS "orders__count" FROM orders AS "orders" WHERE ("orders".created_at < FROM_ISO8601_TIMESTAMP(?) OR "orders".created_at > FROM_ISO8601_TIMESTAMP(?)) ORDER BY 1 ASC LIMIT 10000;
