# Plots for bench/RESULTS.md; run in bench/results after bench/report/results.py.
set terminal pngcairo size 900,600 noenhanced
set logscale x 2
set xtics ("0/1" 1, "8" 8, "64" 64, "512" 512, "4K" 4096, "32K" 32768, "256K" 262144, "1M" 1048576, "4M" 4194304)
set grid
set key top left
set output "mpi_latency.png"
set title "Ping-pong one-way latency: MPI and native active messages"
set xlabel "message size (bytes)"
set ylabel "latency (us)"
set logscale y 10
plot for [i=2:5] "mpi_latency.dat" using 1:i with linespoints title "MPI ".word("vader tcp hpam-medusa hpam-hamlyn", i-1), \
     for [i=2:3] "native_latency.dat" using 1:i with linespoints dashtype 2 title "native AM ".word("medusa hamlyn", i-1)
set output "mpi_bandwidth.png"
set title "MPI streaming bandwidth (64 messages in flight)"
set ylabel "bandwidth (MB/s)"
plot for [i=2:5] "mpi_bandwidth.dat" using 1:i with linespoints title word("vader tcp hpam-medusa hpam-hamlyn", i-1)
unset logscale
set xtics autofreq
set output "logp_signature.png"
set title "LogP signature: time per message with a delay after each send"
set xlabel "delay after each send (us)"
set ylabel "time per message (us)"
plot "signature_logp_native_medusa.dat" using 1:2 with linespoints title "native medusa", \
     "signature_logp_native_hamlyn.dat" using 1:2 with linespoints title "native hamlyn", \
     "signature_logp_mpi_vader.dat" using 1:2 with linespoints title "MPI vader", \
     "signature_logp_mpi_hpam-medusa.dat" using 1:2 with linespoints title "MPI hpam-medusa"
