// Package quant holds quantized weight matrices for the course models and
// the products that use them.
//
// Three formats, each a row-major [rows][cols] matrix of codes plus float32
// scales:
//
//   - Int8Rows, "int8": the course's quantize_int8 exactly: one scale per
//     row, max|w_row| clamped to >= 1e-8 then /127; q = round(w/scale) with
//     ties to even, clamped to [-127, 127]; w' = float32(q)·scale.
//   - "int8-a8": the same weights, but each product also quantizes its input
//     vector to int8 (one scale per vector) and multiplies in integers with
//     kernels.MatVecI8: faster, and no longer the course's numbers.
//   - Int4Groups, "int4-g32"/"int4-g64"/"int4-g128": groups of 32/64/128
//     values along a row share one scale; two 4-bit codes per byte.
//   - FP8Rows, "fp8": OCP FP8 E4M3 (no infinities, max 448) with one scale
//     per row so the row's largest value maps to 448.
//
// A product (except int8-a8's) dequantizes the weights to float32 (exactly
// the float32 values the course's Q.float()·scale gives for int8) and runs the
// float kernels, so an "int8" model computes what the course computes after
// quantize_int8.
package quant

import (
	"fmt"
	"strings"

	"chat/models"
)

// Quantizer is a float32 model that can make a copy of itself with quantized
// weights (*course.Model has it). The copy needs its own States.
type Quantizer interface {
	models.Model
	QuantizeModel(format string) (models.Model, error)
}

// Matrix is a quantized row-major [Rows][Cols] weight matrix.
type Matrix interface {
	Rows() int
	Cols() int
	// Format is the name New takes: "int8", "int4-g32", "fp8", ...
	Format() string
	// Bytes is the storage the matrix reads per full product: codes and scales.
	Bytes() int64
	// DequantizeRows writes rows [r0, r1) as float32 to dst, row-major
	// [r1-r0][Cols].
	DequantizeRows(dst []float32, r0, r1 int)
}

// Formats lists the formats New accepts, besides "f32".
var Formats = []string{"int8", "int8-a8", "int4-g32", "int4-g64", "int4-g128", "fp8"}

// CheckFormat returns an error naming the accepted formats when format is
// neither "f32" nor one of Formats.
func CheckFormat(format string) error {
	if format == "f32" {
		return nil
	}
	for _, f := range Formats {
		if f == format {
			return nil
		}
	}
	return fmt.Errorf("quant: unknown format %q (want f32, %s)", format, strings.Join(Formats, ", "))
}

// New quantizes the row-major [rows][cols] matrix w in format.
func New(format string, w []float32, rows, cols int) (Matrix, error) {
	switch format {
	case "int8":
		return NewInt8Rows(w, rows, cols)
	case "int8-a8":
		m, err := NewInt8Rows(w, rows, cols)
		if err != nil {
			return nil, err
		}
		m.A8 = true
		return m, nil
	case "int4-g32":
		return NewInt4Groups(w, rows, cols, 32)
	case "int4-g64":
		return NewInt4Groups(w, rows, cols, 64)
	case "int4-g128":
		return NewInt4Groups(w, rows, cols, 128)
	case "fp8":
		return NewFP8Rows(w, rows, cols)
	}
	if err := CheckFormat(format); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("quant: format %q keeps float32 weights; there is nothing to quantize", format)
}

// Dequantize returns the whole matrix as float32.
func Dequantize(m Matrix) []float32 {
	out := make([]float32, m.Rows()*m.Cols())
	m.DequantizeRows(out, 0, m.Rows())
	return out
}

func checkShape(what string, w []float32, rows, cols int) error {
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("quant: %s: bad shape [%d][%d]", what, rows, cols)
	}
	if len(w) != rows*cols {
		return fmt.Errorf("quant: %s: %d values for shape [%d][%d]", what, len(w), rows, cols)
	}
	return nil
}

// minAmax is the course's clamp on a row's max|w| (a float32 1e-8), so a row
// of zeros gets a tiny positive scale instead of a division by zero.
const minAmax = float32(1e-8)

func absMax(w []float32) float32 {
	var m float32
	for _, v := range w {
		if v < 0 {
			v = -v
		}
		if v > m || v != v {
			m = v
		}
	}
	return m
}
