// Runs Anserini's own command-line tools in one JVM, one after the other, and prints each step's
// wall and CPU seconds (the CPU time of the whole JVM: JIT compiler and garbage collector included).
//
// Used by benchmarks/peer_anserini.py (compiled against Anserini's fat jar, which Pyserini's wheel
// ships); each line of the plan file is "PHASE<TAB>MAIN CLASS<TAB>ARGUMENT<TAB>ARGUMENT...", e.g.
//   index   io.anserini.index.IndexCollection   -collection   JsonCollection   -input   DIR ...
//   rank    io.anserini.search.SearchCollection -index        DIR              -topics  FILE ...
// One JVM instead of one per step saves its start-up (about a second of CPU each) and lets the JIT's
// work on the first step serve the next ones: Lucene at its best.

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;

public class AnseriniSide {
  public static void main(String[] args) throws Exception {
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    List<String> plan = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
    StringBuilder out = new StringBuilder("[");
    for (String line : plan) {
      if (line.isBlank()) continue;
      String[] parts = line.split("\t");
      String[] toolArgs = Arrays.copyOfRange(parts, 2, parts.length);
      long wall = System.nanoTime(), cpu = os.getProcessCpuTime();
      Class.forName(parts[1]).getMethod("main", String[].class).invoke(null, (Object) toolArgs);
      double w = (System.nanoTime() - wall) / 1e9, c = (os.getProcessCpuTime() - cpu) / 1e9;
      out.append(out.length() > 1 ? ", " : "").append(String.format("[\"%s\", %.3f, %.3f]", parts[0], w, c));
    }
    // the JVM's start-up and class loading before the first step, as a step of its own
    double upToNow = os.getProcessCpuTime() / 1e9;
    System.out.println("ANSERINI_STEPS " + out + "] " + String.format("%.3f", upToNow));
  }
}
