package gguf

import (
	"fmt"
	"math"
)

// ValueType is the type tag of a metadata value (gguf.h, enum gguf_type).
type ValueType uint32

// The metadata value types of the GGUF format.
const (
	Uint8   ValueType = 0
	Int8    ValueType = 1
	Uint16  ValueType = 2
	Int16   ValueType = 3
	Uint32  ValueType = 4
	Int32   ValueType = 5
	Float32 ValueType = 6
	Bool    ValueType = 7
	String  ValueType = 8
	Array   ValueType = 9
	Uint64  ValueType = 10
	Int64   ValueType = 11
	Float64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("valuetype(%d)", uint32(t))
}

// size is the encoded size of a fixed-size scalar, or 0 for string and array.
func (t ValueType) size() int {
	switch t {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16:
		return 2
	case Uint32, Int32, Float32:
		return 4
	case Uint64, Int64, Float64:
		return 8
	}
	return 0
}

// KV is one metadata entry. Value holds the Go type matching Type: uint8,
// int8, uint16, int16, uint32, int32, float32, bool, string, uint64, int64,
// float64, or ArrayValue.
type KV struct {
	Key   string
	Type  ValueType
	Value any
}

// ArrayValue is an array metadata value. Data is a slice of the element's Go
// type ([]uint8, []int32, []float32, []string, []bool, ...), or []ArrayValue
// for nested arrays.
type ArrayValue struct {
	Elem ValueType
	Data any
}

// Len is the number of elements.
func (a ArrayValue) Len() int {
	switch d := a.Data.(type) {
	case []uint8:
		return len(d)
	case []int8:
		return len(d)
	case []uint16:
		return len(d)
	case []int16:
		return len(d)
	case []uint32:
		return len(d)
	case []int32:
		return len(d)
	case []float32:
		return len(d)
	case []bool:
		return len(d)
	case []string:
		return len(d)
	case []uint64:
		return len(d)
	case []int64:
		return len(d)
	case []float64:
		return len(d)
	case []ArrayValue:
		return len(d)
	}
	return 0
}

// Get returns the metadata entry for key.
func (f *File) Get(key string) (KV, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return KV{}, false
	}
	return f.KV[i], true
}

// Has reports whether key is present.
func (f *File) Has(key string) bool { _, ok := f.kvIndex[key]; return ok }

// String returns a string value.
func (f *File) String(key string) (string, bool) {
	kv, ok := f.Get(key)
	if !ok {
		return "", false
	}
	s, ok := kv.Value.(string)
	return s, ok
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) {
	kv, ok := f.Get(key)
	if !ok {
		return false, false
	}
	b, ok := kv.Value.(bool)
	return b, ok
}

// Uint returns an integer value of any integer type that is not negative.
func (f *File) Uint(key string) (uint64, bool) {
	kv, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	if u, ok := asUint(kv.Value); ok {
		return u, true
	}
	if i, ok := asInt(kv.Value); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}

// Int returns an integer value of any integer type that fits an int64.
func (f *File) Int(key string) (int64, bool) {
	kv, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	if i, ok := asInt(kv.Value); ok {
		return i, true
	}
	if u, ok := asUint(kv.Value); ok && u <= math.MaxInt64 {
		return int64(u), true
	}
	return 0, false
}

// Float returns a float32 or float64 value (integers are accepted too).
func (f *File) Float(key string) (float64, bool) {
	kv, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return asFloat(kv.Value)
}

// Array returns an array value.
func (f *File) Array(key string) (ArrayValue, bool) {
	kv, ok := f.Get(key)
	if !ok {
		return ArrayValue{}, false
	}
	a, ok := kv.Value.(ArrayValue)
	return a, ok
}

// Strings returns an array of strings. The slice is shared; do not modify it.
func (f *File) Strings(key string) ([]string, bool) {
	a, ok := f.Array(key)
	if !ok {
		return nil, false
	}
	s, ok := a.Data.([]string)
	return s, ok
}

// Float32s returns a numeric array as float32s (a float32 array is returned
// shared, other numeric arrays are converted).
func (f *File) Float32s(key string) ([]float32, bool) {
	a, ok := f.Array(key)
	if !ok {
		return nil, false
	}
	if d, ok := a.Data.([]float32); ok {
		return d, true
	}
	n := a.Len()
	out := make([]float32, n)
	for i := 0; i < n; i++ {
		v, ok := asFloat(index(a.Data, i))
		if !ok {
			return nil, false
		}
		out[i] = float32(v)
	}
	return out, true
}

// Ints returns an integer array of any integer element type as ints.
func (f *File) Ints(key string) ([]int, bool) {
	a, ok := f.Array(key)
	if !ok {
		return nil, false
	}
	n := a.Len()
	out := make([]int, n)
	for i := 0; i < n; i++ {
		v := index(a.Data, i)
		if x, ok := asInt(v); ok {
			out[i] = int(x)
		} else if u, ok := asUint(v); ok && u <= math.MaxInt64 {
			out[i] = int(u)
		} else {
			return nil, false
		}
	}
	return out, true
}

func index(data any, i int) any {
	switch d := data.(type) {
	case []uint8:
		return d[i]
	case []int8:
		return d[i]
	case []uint16:
		return d[i]
	case []int16:
		return d[i]
	case []uint32:
		return d[i]
	case []int32:
		return d[i]
	case []float32:
		return d[i]
	case []bool:
		return d[i]
	case []string:
		return d[i]
	case []uint64:
		return d[i]
	case []int64:
		return d[i]
	case []float64:
		return d[i]
	case []ArrayValue:
		return d[i]
	}
	return nil
}

func asUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	}
	return 0, false
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if i, ok := asInt(v); ok {
		return float64(i), true
	}
	if u, ok := asUint(v); ok {
		return float64(u), true
	}
	return 0, false
}
