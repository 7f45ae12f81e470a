package clientbench

import "runtime"

var numCPU = runtime.NumCPU()
