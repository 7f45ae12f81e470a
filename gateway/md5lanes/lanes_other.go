//go:build !amd64 || purego

package md5lanes

var kernels = []kernel{{"generic", 1, blockLanesGeneric}}

func kernelOne(s *[4]uint32, p []byte) { blockOne(s, p) }
