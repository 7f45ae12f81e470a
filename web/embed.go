package web

import "embed"

// Assets holds the console's pages under static/: plain HTML, CSS and
// JavaScript modules, embedded so building flyfs needs no front-end
// toolchain.
//
//go:embed static
var Assets embed.FS
