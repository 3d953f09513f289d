//go:build amd64 && !purego

package kernels

//go:noescape
func int8DotsVNNI(a *uint8, b *int8, steps int, sums *[16]int32)

//go:noescape
func int8DotsAVX2(a *uint8, b *int8, steps int, sums *[16]int32)

// int8DotsAsm runs steps (a multiple of dotUnroll) with the kernel set's
// integer multiply-add.
func int8DotsAsm(steps int) (sums [16]int32) {
	if isa >= isaAVX512VNNI {
		int8DotsVNNI(&dotA[0], &dotB[0], steps, &sums)
	} else {
		int8DotsAVX2(&dotA[0], &dotB[0], steps, &sums)
	}
	return sums
}
