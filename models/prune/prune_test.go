package prune

import (
	"math"
	"os"
	"testing"

	"chat/models"
	"chat/models/course"
	"chat/models/nn"
	"chat/models/quant/report"
	"chat/models/testmodels"
	"chat/models/weights"
)

func student(t *testing.T) *course.Model {
	t.Helper()
	m, err := course.Load(testmodels.Path(t, "course/student.pt"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// text is the held-out TinyStories text, split in two: calibration from the
// first half, the report on the second.
func text(t *testing.T, m models.Model) (calib, eval []int) {
	t.Helper()
	b, err := os.ReadFile(testmodels.Path(t, "text/TinyStories-valid-head.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ids := m.Tokenizer().Encode(string(b))
	return ids[:len(ids)/2], ids[len(ids)/2:]
}

// matrices lists the pruned model's matrices that pruning touches.
func matrices(m models.Model) []weights.Linear {
	return nn.Linears(m.(variant).Arch())
}

// TestSparsityIsExact: unstructured pruning zeroes exactly ⌊S·n⌋ weights of
// each group (the matrix for magnitude, each row for wanda), and the
// reported sparsity is the count of zeros.
func TestSparsityIsExact(t *testing.T) {
	m := student(t)
	calib, _ := text(t, m)
	cal, err := Calibrate(m, calib, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{Method: "magnitude", Sparsity: 0.5}, {Method: "wanda", Sparsity: 0.3}} {
		pm, st, err := Prune(m, o, cal)
		if err != nil {
			t.Fatal(err)
		}
		var weightsN, zeros, want int64
		for _, l := range matrices(pm) {
			w := l.(*weights.F32).Floats()
			n := int64(len(w))
			weightsN += n
			if o.Method == "magnitude" {
				want += int64(math.Floor(o.Sparsity * float64(n)))
			} else {
				want += int64(l.Rows()) * int64(math.Floor(o.Sparsity*float64(l.Cols())))
			}
			for _, x := range w {
				if x == 0 {
					zeros++
				}
			}
		}
		if st.Zeros != zeros || st.Weights != weightsN || zeros != want {
			t.Errorf("%s: stats %+v; counted %d zeros of %d, want exactly %d", o, st, zeros, weightsN, want)
		}
		t.Logf("%s: %d matrices, sparsity %.6f", o, st.Matrices, st.Sparsity())
	}
}

// TestTwoFour: under 2:4 every group of 4 consecutive weights of a row has
// at most 2 non-zeros (exactly 2 here: no weight of student.pt is zero).
func TestTwoFour(t *testing.T) {
	m := student(t)
	calib, _ := text(t, m)
	cal, err := Calibrate(m, calib, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"magnitude", "wanda"} {
		o := Options{Method: method, N: 2, M: 4}
		pm, st, err := Prune(m, o, cal)
		if err != nil {
			t.Fatal(err)
		}
		checkZeros(t, o, pm, st)
		if st.Sparsity() != 0.5 {
			t.Errorf("%s 2:4: sparsity %v, want 0.5", method, st.Sparsity())
		}
	}
	if _, _, err := Prune(m, Options{Method: "magnitude", N: 2, M: 7}, nil); err == nil {
		t.Error("2:7 on rows of 192 and 512")
	}
}

// TestActivationAwareBeatsMagnitude: on student.pt, at 50% unstructured
// and at 2:4, SparseGPT (calibrated on the first half of the TinyStories
// text) keeps the model closer to the original than magnitude pruning on
// the second half: lower loss, higher top-1 agreement. Wanda is measured
// too; on a model this small (no outlier features) it is no better than
// magnitude, so it is reported, not asserted.
func TestActivationAwareBeatsMagnitude(t *testing.T) {
	m := student(t)
	calib, eval := text(t, m)
	cal, err := Calibrate(m, calib, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, shape := range []Options{{Sparsity: 0.5}, {N: 2, M: 4}} {
		names := []string{"dense"}
		ms := []models.Model{m}
		for _, method := range []string{"magnitude", "wanda"} {
			o := shape
			o.Method = method
			pm, _, err := Prune(m, o, cal)
			if err != nil {
				t.Fatal(err)
			}
			names, ms = append(names, o.String()), append(ms, pm)
		}
		o := shape
		o.Method = "sparsegpt"
		pm, st, err := SparseGPT(m, o, calib, 4)
		if err != nil {
			t.Fatal(err)
		}
		if st.Sparsity() != 0.5 {
			t.Errorf("%s: sparsity %v", o, st.Sparsity())
		}
		checkZeros(t, o, pm, st)
		names, ms = append(names, o.String()), append(ms, pm)
		tab, err := report.Compare(names, ms, eval, report.Options{Windows: 6})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("\n%s", tab.Text())
		mag, gpt := tab.Rows[1], tab.Rows[3]
		if !(gpt.Loss < mag.Loss) || !(gpt.Top1 > mag.Top1) {
			t.Errorf("%s: sparsegpt loss %.4f top-1 %.4f, magnitude loss %.4f top-1 %.4f", o, gpt.Loss, gpt.Top1, mag.Loss, mag.Top1)
		}
	}
}

// checkZeros counts the zeros of pm's matrices: they are what st reports,
// and under N:M no group of M has more than N non-zeros.
func checkZeros(t *testing.T, o Options, pm models.Model, st Stats) {
	t.Helper()
	var weightsN, zeros int64
	for _, l := range matrices(pm) {
		w := l.(*weights.F32).Floats()
		weightsN += int64(len(w))
		for g := 0; g < len(w); g += max(o.M, 1) {
			nz := 0
			for _, x := range w[g:min(g+max(o.M, 1), len(w))] {
				if x == 0 {
					zeros++
				} else {
					nz++
				}
			}
			if o.M > 0 && nz > o.N {
				t.Fatalf("%s: group at %d has %d non-zeros", o, g, nz)
			}
		}
	}
	if st.Zeros != zeros || st.Weights != weightsN {
		t.Errorf("%s: stats %+v; counted %d zeros of %d", o, st, zeros, weightsN)
	}
}
