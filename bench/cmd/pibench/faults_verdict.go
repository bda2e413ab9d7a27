package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// faultsVerdict is the one line `make faults` ends with: the totals of the
// fault scenarios (rows, from faults.json) and the outcome of the docker
// timeout trials (trials, the test output in faults-docker-trials.txt; ""
// when that step did not run). ok is false when any total is non-zero, a
// survivor count is unknown, or the trials test did not pass.
func faultsVerdict(rows []scenResult, trials string) (line string, ok bool) {
	var n, surv, unknown, hangs, fails, lost int
	var skipped []string
	for _, r := range rows {
		if r.Skipped != "" {
			skipped = append(skipped, r.Backend)
			continue
		}
		n += r.Trials
		if r.Survivors < 0 {
			unknown++
		} else {
			surv += r.Survivors
		}
		hangs += r.Hangs
		fails += r.Failures
		lost += r.Lost
	}
	ok = surv == 0 && unknown == 0 && hangs == 0 && fails == 0 && lost == 0 && n > 0
	var b strings.Builder
	fmt.Fprintf(&b, "faults: %d survivors, %d hangs, %d failures, %d lost files in %d trials", surv, hangs, fails, lost, n)
	if unknown > 0 {
		fmt.Fprintf(&b, ", %d survivor counts unknown", unknown)
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, ", skipped: %s", strings.Join(skipped, ", "))
	}
	switch {
	case trials == "":
	case strings.Contains(trials, "\nFAIL") || strings.HasPrefix(trials, "FAIL"):
		b.WriteString("; docker timeout trials FAIL")
		ok = false
	case strings.Contains(trials, "\nok "):
		b.WriteString("; docker timeout trials pass")
	default:
		b.WriteString("; docker timeout trials did not finish")
		ok = false
	}
	if ok {
		b.WriteString(" — PASS")
	} else {
		b.WriteString(" — FAIL")
	}
	return b.String(), ok
}

// runVerdict prints faultsVerdict of the reports in o.out and fails when the
// verdict does.
func runVerdict(o *options) error {
	data, err := os.ReadFile(filepath.Join(o.out, "faults.json"))
	if err != nil {
		return err
	}
	var rows []scenResult
	if err := json.Unmarshal(data, &rows); err != nil {
		return fmt.Errorf("faults.json: %w", err)
	}
	trials, err := os.ReadFile(filepath.Join(o.out, "faults-docker-trials.txt"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	line, ok := faultsVerdict(rows, string(trials))
	fmt.Println(line)
	if !ok {
		return errors.New("faults: the verdict is FAIL")
	}
	return nil
}
