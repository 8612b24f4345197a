using BoundedWork.AdaptiveSimulation;

// The adaptive controller in simulation: deterministic, seconds for simulated minutes, so parameters can be compared
// without a noisy machine in the way.
//   scenarios [--scenario NAME] [--out DIR]   the four scenarios against fixed-min, fixed-max, the oracle and adaptive
//   tune [--scenario NAME] [--top N]          a grid of parameters, ranked by how close each comes to the oracle
//   trace --scenario NAME                     every decision of the adaptive run, one line each
if (args.Length == 0 || args[0] is "-h" or "--help")
{
    Console.Error.WriteLine("Commands: scenarios [--scenario seed|saturating|bursts|cpu-burst] [--out DIR] | tune [--scenario NAME] [--top N] | trace --scenario NAME");
    return args.Length == 0 ? 2 : 0;
}

try
{
    var options = Options.Parse(args[1..]);
    return args[0] switch
    {
        "scenarios" => Commands.RunScenarios(options),
        "tune" => Commands.Tune(options),
        "trace" => Commands.Trace(options),
        _ => throw new ArgumentException($"Unknown command '{args[0]}'."),
    };
}
catch (ArgumentException e)
{
    Console.Error.WriteLine(e.Message);
    return 2;
}
