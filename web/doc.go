// Package web is the admin console: embedded static pages and their JSON API.
// Built by the console issue.
package web
