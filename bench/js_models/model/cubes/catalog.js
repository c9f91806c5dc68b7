// Cubes made by a function: asyncModule's synchronous result (nothing here waits for the network).
asyncModule(async () => {
  const tables = await Promise.resolve([
    { name: `products`, key: `id`, labels: [`name`, `category`] },
  ]);
  tables.forEach(({ name, key, labels }) => {
    cube(name, {
      sqlTable: name,
      measures: { count: { type: `count` }, average_price: { sql: `price`, type: `avg` } },
      dimensions: {
        [key]: { sql: key, type: `number`, primaryKey: true },
        ...Object.fromEntries(labels.map((label) => [label, { sql: label, type: `string` }])),
      },
    });
  });
});

cube(`line_items`, {
  sqlTable: `line_items`,
  joins: {
    products: { relationship: `many_to_one`, sql: `${CUBE}.product_id = ${products.id}` },
  },
  measures: {
    revenue: { sql: `${CUBE}.quantity * ${CUBE}.price`, type: `sum` },
    units: { sql: `quantity`, type: `sum` },
  },
  dimensions: {
    id: { sql: `id`, type: `number`, primaryKey: true },
  },
});
