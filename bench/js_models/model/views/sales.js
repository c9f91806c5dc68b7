view(`sales`, {
  cubes: [
    { joinPath: orders, includes: [`count`, `total_amount`, `status`, `size`, `created_at`] },
    { join_path: orders.users, prefix: true, includes: [`country`, `gender`] },
    { join_path: orders.line_items.products, includes: [{ name: `category`, alias: `product_category` }] },
  ],
});
