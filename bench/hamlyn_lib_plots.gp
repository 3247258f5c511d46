# The Hamlyn library's one-way time against size, with the fitted lines;
# run in bench/results after bench/report/hamlyn_lib.py (which writes the
# .dat and the fit's coefficients).
set terminal pngcairo size 900,600 noenhanced
set grid
set key top left
load "hamlyn_lib_fit.gp"
set output "hamlyn_lib_one_way.png"
set title "Hamlyn library protocols: one-way time against message size (4 KiB packets)"
set xlabel "message size (bytes)"
set ylabel "one-way time (us)"
plot "hamlyn_lib_one_way.dat" using 1:2 with points pt 7 title "datagram", \
     datagram_a + datagram_b * x with lines dashtype 2 title sprintf("datagram fit %.3f us + %.4f ns/byte", datagram_a, datagram_b * 1000), \
     "hamlyn_lib_one_way.dat" using 1:3 with points pt 5 title "stream", \
     stream_a + stream_b * x with lines dashtype 2 title sprintf("stream fit %.3f us + %.4f ns/byte", stream_a, stream_b * 1000)
