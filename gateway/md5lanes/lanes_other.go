//go:build !amd64 || purego

package md5lanes

var kernels = []kernel{{"generic", blockLanesGeneric}}

func hashOne(s *[4]uint32, p []byte) {
	n := len(p) / blockSize
	if n >= stdMinBlocks && stdBlocks(s, p[:n*blockSize]) {
		return
	}
	blockOne(s, p)
}
