package kernels

import "testing"

// TestInt8Dots: the probe's loop on each kernel set computes the pure-Go
// twin's sums (each lane steps × its 4-byte dot product) and counts the
// same multiply-adds; a set this CPU does not run is skipped.
func TestInt8Dots(t *testing.T) {
	for l := isaGo; l <= isaAVX512VNNI; l++ {
		t.Run(implName(l), func(t *testing.T) {
			if !runnable(l) {
				t.Skipf("this CPU does not run the %s kernels", implName(l))
			}
			withImpl(l, func() {
				for _, steps := range []int{0, 1, 16, 17, 1000} {
					macs, got := Int8Dots(steps)
					n := int(macs / 64)
					if n < steps || n%dotUnroll != 0 || macs != 64*int64(n) {
						t.Fatalf("%d steps ran %d multiply-adds", steps, macs)
					}
					want := int8DotsGo(n)
					for lane, s := range want {
						var d int32
						for j := 4 * lane; j < 4*lane+4; j++ {
							d += int32(dotA[j]) * int32(dotB[j])
						}
						if s != int32(n)*d {
							t.Fatalf("Go twin lane %d: %d, want %d × %d", lane, s, n, d)
						}
					}
					if got != want {
						t.Fatalf("%s, %d steps: %v, want %v", Int8DotInstr(), n, got, want)
					}
				}
			})
		})
	}
}

func BenchmarkInt8Dots(b *testing.B) {
	for _, l := range isaLevels(nil) {
		b.Run(implName(l), func(b *testing.B) {
			withImpl(l, func() {
				var macs int64
				for b.Loop() {
					m, _ := Int8Dots(1 << 12)
					macs += m
				}
				b.ReportMetric(2*float64(macs)/b.Elapsed().Seconds()/1e9, "Gop/s")
			})
		})
	}
}
