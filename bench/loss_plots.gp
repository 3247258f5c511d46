# Bandwidth and latency against the drop rate, the default loss recovery
# beside HPAM's fixed timeout: results/loss_sweep.png from loss_sweep.csv
# (bench/loss.sh). Run in the results directory (bench/run does).
set terminal pngcairo size 1000,420 font ",10"
set output "loss_sweep.png"
set datafile separator ","
set multiplot layout 1,2 title "hpam-medusa, 2 ranks: what a lost packet costs (bench/loss.sh)"
set logscale x
set xlabel "drop probability per packet"
set key bottom left
set grid
set ylabel "16 KiB stream, MB/s"
plot "< grep '^adaptive' loss_sweep.csv | grep -v ',0,'" using 2:3 with linespoints title "adaptive timeout + early resend", \
     "< grep '^fixed' loss_sweep.csv | grep -v ',0,'" using 2:3 with linespoints title "fixed 1 ms timeout"
set logscale y
set key top left
set ylabel "8 B round trips: mean one-way latency, us"
plot "< grep '^adaptive' loss_sweep.csv | grep -v ',0,'" using 2:4 with linespoints title "adaptive timeout + early resend", \
     "< grep '^fixed' loss_sweep.csv | grep -v ',0,'" using 2:4 with linespoints title "fixed 1 ms timeout"
unset multiplot
