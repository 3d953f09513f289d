package kernels

// Arith is the arithmetic a weight format's products run on, which sets the
// peak rate they can reach (models/plan measures one peak for each).
type Arith int

const (
	// ArithFMA: float32 multiply-adds, also for weights widened to float32
	// in registers (f16, bf16, fp8, the 4-bit tables, the course's int8).
	ArithFMA Arith = iota
	// ArithInt8: int8 dot products of the weights with activations
	// quantised to int8 (the Q8_0 and Q8_K formats, int8-a8, int4-a8).
	ArithInt8
)

func (a Arith) String() string {
	if a == ArithInt8 {
		return "int8 dot products"
	}
	return "float32 FMAs"
}

// The int8 peak probe: a loop of the instruction the integer kernels
// multiply-add with on this kernel set (VPDPBUSD on zmm with AVX-512 VNNI,
// VPMADDUBSW + VPMADDWD + VPADDD on ymm otherwise, int32 multiply-adds in
// Go), on operands held in registers, with enough independent sums to keep
// every unit busy: the rate no integer kernel can beat. A step is 64
// multiply-adds: one row of 64 unsigned bytes (dotA) by one of 64 signed
// bytes (dotB), summed in groups of 4 into 16 int32 lanes.
var (
	dotA [64]uint8
	dotB [64]int8
)

func init() {
	for i := range dotA {
		// Small enough that VPMADDUBSW's int16 pair sums never saturate.
		dotA[i], dotB[i] = uint8(i%16), int8(i%13-6)
	}
}

// dotUnroll is the steps of one pass of the assembly loops.
const dotUnroll = 16

// Int8DotInstr names the instructions Int8Dots runs on this kernel set.
func Int8DotInstr() string {
	switch {
	case isa >= isaAVX512VNNI:
		return "VPDPBUSD zmm"
	case useAsm:
		return "VPMADDUBSW ymm"
	}
	return "Go"
}

// Int8Dots runs at least steps steps of the int8 peak probe (a whole number
// of passes) on the calling thread and returns the multiply-adds done and
// the 16 lane sums, which every kernel set computes alike (int32 sums wrap
// the same way in each).
func Int8Dots(steps int) (macs int64, sums [16]int32) {
	steps = (max(steps, 1) + dotUnroll - 1) / dotUnroll * dotUnroll
	if useAsm {
		sums = int8DotsAsm(steps)
	} else {
		sums = int8DotsGo(steps)
	}
	return 64 * int64(steps), sums
}

// int8DotsGo is the probe in Go: the pure-Go integer kernels' multiply-add.
func int8DotsGo(steps int) (sums [16]int32) {
	a, b := &dotA, &dotB
	for range steps {
		for l := range sums {
			sums[l] += int32(a[4*l])*int32(b[4*l]) + int32(a[4*l+1])*int32(b[4*l+1]) +
				int32(a[4*l+2])*int32(b[4*l+2]) + int32(a[4*l+3])*int32(b[4*l+3])
		}
	}
	return sums
}
