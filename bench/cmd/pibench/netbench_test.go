package main

import "testing"

func TestPublishedAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:32768\n":              "127.0.0.1:32768",
		"[::1]:32769\n127.0.0.1:32770\n": "127.0.0.1:32770",
		"0.0.0.0:32771\n[::]:32771\n":    "",
		"":                               "",
	} {
		if got := publishedAddr(in); got != want {
			t.Errorf("publishedAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMedian(t *testing.T) {
	if m := median(nil); m != 0 {
		t.Errorf("median(nil) = %v", m)
	}
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median(3,1,2) = %v", m)
	}
}
