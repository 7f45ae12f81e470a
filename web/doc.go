// Package web holds the admin console's pages (static/: index.html, CSS and
// JavaScript modules), embedded in the binary. The console package serves
// them with the JSON API behind them.
package web
