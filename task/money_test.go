package task

import "testing"

// Money sums to the micro-dollar: no float noise, six decimals at most.
func TestRoundUSDAndFormat(t *testing.T) {
	if got := RoundUSD(0.1 + 0.2); got != 0.3 {
		t.Errorf("0.1+0.2 = %v", got)
	}
	if got := FormatUSD(0.4 * 3); got != "1.2" {
		t.Errorf("0.4*3 prints %q", got)
	}
	if got := FormatUSD(1e308); got != "1e+308" {
		t.Errorf("1e308 prints %q", got)
	}
	if got := FormatUSD(-1e308); got != "-1e+308" {
		t.Errorf("-1e308 prints %q", got)
	}
}
