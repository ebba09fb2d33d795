package rpcbench

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      int
		want   time.Duration
	}{
		{"one sample", ms(7), 50, 7 * time.Millisecond},
		{"one sample p99", ms(7), 99, 7 * time.Millisecond},
		{"median of four is the second", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 30 is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30), 99, 30 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(hundred...), 99, 99 * time.Millisecond},
		{"p50 of 100 is the 50th", ms(hundred...), 50, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Fatalf("percentile(%v, %d) = %v, want %v", tc.sorted, tc.p, got, tc.want)
			}
		})
	}
}

// The floor is only a floor if it answers with exactly the bytes it was given.
func TestEchoAnswersWithTheCannedResult(t *testing.T) {
	d := harness.Start(t, echoBin(t), harness.Options{})
	ctx := harness.Deadline(t, 30*time.Second)
	if _, err := d.Initialize(ctx, t.TempDir(), true, nil); err != nil {
		t.Fatal(err)
	}
	var before json.RawMessage
	if err := d.Call(ctx, "tools/execute", map[string]string{"callID": "a"}, &before); err != nil {
		t.Fatal(err)
	}
	if string(before) != `{"callID":"a"}` {
		t.Fatalf("before bench/setResult: got %s, want the params back", before)
	}
	canned := json.RawMessage(`{"callID":"x","status":"completed","output":"     1\tline one \u00e9\n"}`)
	if err := d.Call(ctx, "bench/setResult", canned, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"b", "c"} {
		var got json.RawMessage
		if err := d.Call(ctx, "tools/execute", map[string]string{"callID": id}, &got); err != nil {
			t.Fatal(err)
		}
		if string(got) != string(canned) {
			t.Fatalf("call %s: got %s, want %s", id, got, canned)
		}
	}
	if code, err := d.Shutdown(context.Background()); err != nil || code != 0 {
		t.Fatalf("shutdown: code %d, %v", code, err)
	}
}
