# Plots of the applications section of bench/RESULTS.md; run in the results
# directory after bench/report/results.py (which writes apps_time.dat, radix_phases.dat).
set terminal pngcairo size 1000,600 noenhanced
set grid ytics
set xtics nomirror rotate by -20
set key top left
set style data histograms
set style fill solid 0.85 border -1
set output "apps_time.png"
set title "Split-C applications, 2 processes: time per transport (median)"
set style histogram clustered gap 1
set logscale y 10
set ylabel "seconds (log scale)"
plot for [i=2:6] "apps_time.dat" using i:xtic(1) title columnheader
unset logscale y
set output "radix_phases.png"
set title "Radix sort phases per transport (HP-LAM Table 4.3 layout)"
set style histogram rowstacked
set boxwidth 0.6
set key outside right
set ylabel "seconds (median)"
plot for [i=2:7] "radix_phases.dat" using i:xtic(1) title columnheader
