// Package client is the one client library every flyfs front end uses.
package client
