#!/usr/bin/env bash
# Times lazy pull and lazy push of N tasks (default 10,000) of which 10
# changed, against plain git fetch/push of the same refs on this machine,
# and prints medians and ratios. Usage: scripts/bench-sync.sh [N] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10000}"
rounds="${2:-5}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/lazy" .
go build -o "$work/seed" ./scripts/seed
lazy="$work/lazy"
export GIT_CONFIG_NOSYSTEM=1 LAZY_NO_DAEMON=1
ms() { echo $(( ($2 - $1) / 1000000 )); }
now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

git init -q --bare "$work/remote.git"
git -C "$work/remote.git" symbolic-ref HEAD refs/heads/main
git init -q -b main "$work/a"
cd "$work/a"
git -c user.name=b -c user.email=b@x commit -q --allow-empty -m init
git remote add origin "$work/remote.git"
git push -q origin main
"$lazy" init >/dev/null
echo "seeding $n tasks..."
"$work/seed" -C . -n "$n"
git pack-refs --all
t0=$(now); "$lazy" push >/dev/null; t1=$(now)
echo "initial lazy push of $n tasks: $(ms "$t0" "$t1") ms"
for c in b raw; do git clone -q "$work/remote.git" "$work/$c"; done
cd "$work/b"
t0=$(now); "$lazy" init >/dev/null; t1=$(now)
echo "lazy init (bootstrap pull) of $n tasks: $(ms "$t0" "$t1") ms"
git -C "$work/raw" fetch -q origin '+refs/lazy/*:refs/lazy-remotes/origin/*'

ids=$(git -C "$work/a" for-each-ref --count=10 --format='%(refname:lstrip=3)' refs/lazy/tasks/)
change() { for id in $ids; do "$lazy" -C "$work/a" comment "$id" -m "change $1" >/dev/null; done; }
lp=(); gf=(); lu=(); gu=()
for r in $(seq "$rounds"); do
	change "pull-$r"
	t0=$(now); "$lazy" -C "$work/a" push >/dev/null; t1=$(now); lu+=("$(ms "$t0" "$t1")")
	t0=$(now); git -C "$work/raw" fetch -q origin '+refs/lazy/*:refs/lazy-remotes/origin/*'; t1=$(now); gf+=("$(ms "$t0" "$t1")")
	t0=$(now); "$lazy" -C "$work/b" pull >/dev/null; t1=$(now); lp+=("$(ms "$t0" "$t1")")
	change "push-$r"
	t0=$(now); git -C "$work/a" push -q origin 'refs/lazy/*:refs/lazy/*'; t1=$(now); gu+=("$(ms "$t0" "$t1")")
	"$lazy" -C "$work/b" pull >/dev/null
	git -C "$work/raw" fetch -q origin '+refs/lazy/*:refs/lazy-remotes/origin/*'
done
m_lp=$(printf '%s\n' "${lp[@]}" | median); m_gf=$(printf '%s\n' "${gf[@]}" | median)
m_lu=$(printf '%s\n' "${lu[@]}" | median); m_gu=$(printf '%s\n' "${gu[@]}" | median)
echo
echo "$n tasks, 10 changed, median of $rounds rounds:"
printf '  git fetch refs/lazy/*     %6d ms\n' "$m_gf"
printf '  lazy pull                 %6d ms   %sx git fetch\n' "$m_lp" "$(awk -v a="$m_lp" -v b="$m_gf" 'BEGIN{printf "%.2f", a/(b?b:1)}')"
printf '  git push refs/lazy/*      %6d ms\n' "$m_gu"
printf '  lazy push                 %6d ms   %sx git push\n' "$m_lu" "$(awk -v a="$m_lu" -v b="$m_gu" 'BEGIN{printf "%.2f", a/(b?b:1)}')"
