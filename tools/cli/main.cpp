// scn — command-line front end: run, compare, inspect, synth, bench, calibrate, viz, voxelize.
#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include "commands.h"
#include "scn_version.h"

int main(int argc, char** argv) {
  using namespace scn::cli;
  CLI::App app{"scn: inference engine for 3D sparse-convolution networks (NVIDIA SCN ONNX models)"};
  app.name("scn");
  app.require_subcommand(1, 1);
  app.fallthrough(false);
  app.set_version_flag("--version", std::string("scn ") + SCN_VERSION +
                                        (std::string(SCN_GIT_DESCRIBE).empty() ? "" : " (" SCN_GIT_DESCRIBE ")"));

  RunArgs run;
  CompareArgs compare;
  InspectArgs inspect;
  SynthArgs synth;
  BenchArgs bench;
  CalibrateArgs calibrate;
  VizArgs viz;
  VoxelizeArgs voxelize;
  struct Command {
    CLI::App* app;
    std::function<int()> exec;
  };
  const Command commands[] = {
      {add_run(app, run), [&] { return run_run(run); }},
      {add_compare(app, compare), [&] { return run_compare(compare); }},
      {add_inspect(app, inspect), [&] { return run_inspect(inspect); }},
      {add_synth(app, synth), [&] { return run_synth(synth); }},
      {add_bench(app, bench), [&] { return run_bench(bench); }},
      {add_calibrate(app, calibrate), [&] { return run_calibrate(calibrate); }},
      {add_viz(app, viz), [&] { return run_viz(viz); }},
      {add_voxelize(app, voxelize), [&] { return run_voxelize(voxelize); }},
  };
  strict_numbers(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error and a hint
    return code == 0 ? 0 : 2;
  }
  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    try {
      return c.exec();
    } catch (const std::exception& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "scn %s: %s\n", c.app->get_name().c_str(), e.what());
      return 1;
    }
  }
  return 2;
}
