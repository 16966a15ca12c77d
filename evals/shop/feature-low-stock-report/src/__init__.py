"""Shop backend: catalog, stock, pricing, orders, invoices and reports."""
