package layout

import (
	"fmt"
	"math/bits"
)

// Shuffle algorithms. The id is stored in every file's Layout, and the
// permutation an id produces for a (seed, n) is part of the on-disk format:
// every client and server, of every version, must compute the same chain for
// the same chunk forever. 3FS broke exactly this when libstdc++ changed
// std::shuffle (3FS issue #368), so the algorithm here depends on nothing but
// integer arithmetic written out below — never math/rand, whose streams may
// change between Go releases.
//
// Any change to the output of an algorithm, however small (the generator, its
// seeding, the bounded-integer method, the loop direction), needs a NEW id,
// with the old one kept for existing files. shuffle_test.go pins the output
// with golden vectors; if they fail, the change is wrong, not the vectors.
const (
	// AlgoSplitMixFY (1): SplitMix64 seeded with the layout's Seed, Lemire's
	// unbiased bounded integers, Fisher–Yates from the last position down.
	AlgoSplitMixFY uint8 = 1

	// DefaultAlgo is the algorithm new layouts get.
	DefaultAlgo = AlgoSplitMixFY
)

// KnownAlgo reports whether algo is a shuffle algorithm this code implements.
func KnownAlgo(algo uint8) bool { return algo == AlgoSplitMixFY }

// Permutation returns the permutation of [0, n) that algo produces for seed.
// It fails for an unknown algorithm and for n > MaxStripe.
func Permutation(algo uint8, seed uint64, n uint32) ([]uint32, error) {
	if n > MaxStripe {
		return nil, fmt.Errorf("%w: permutation of %d positions, at most %d", ErrLayout, n, MaxStripe)
	}
	switch algo {
	case AlgoSplitMixFY:
		return splitMixFY(seed, n), nil
	default:
		return nil, fmt.Errorf("%w: unknown shuffle algorithm %d", ErrLayout, algo)
	}
}

// splitMixFY is algorithm 1, spelled out so it can be re-implemented in any
// language:
//
//	state := seed
//	next():  state += 0x9E3779B97F4A7C15 (mod 2^64); z := state
//	         z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
//	         z = (z ^ z>>27) * 0x94D049BB133111EB
//	         return z ^ z>>31
//	below(m): (hi, lo) := 128-bit product next()*m
//	         if lo < m { t := (2^64 - m) mod m; while lo < t { (hi, lo) := next()*m } }
//	         return hi
//	p := [0, 1, ..., n-1]
//	for i := n-1 down to 1 { j := below(i+1); swap p[i], p[j] }
func splitMixFY(seed uint64, n uint32) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = uint32(i)
	}
	g := splitMix64{state: seed}
	for i := int(n) - 1; i > 0; i-- {
		j := g.below(uint64(i) + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// splitMix64 is Steele, Lea and Flood's SplitMix64 (the reference
// splitmix64.c by Vigna): 64 bits of state, passes BigCrush, trivially
// portable.
type splitMix64 struct{ state uint64 }

func (g *splitMix64) next() uint64 {
	g.state += 0x9E3779B97F4A7C15
	z := g.state
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// below returns a uniform integer in [0, m), m ≥ 1, by Lemire's
// multiply-and-reject method ("Fast random integer generation in an
// interval", 2019): unbiased, and defined purely in integer arithmetic.
func (g *splitMix64) below(m uint64) uint64 {
	hi, lo := bits.Mul64(g.next(), m)
	if lo < m {
		t := -m % m
		for lo < t {
			hi, lo = bits.Mul64(g.next(), m)
		}
	}
	return hi
}
