using System.Globalization;

namespace BoundedWork.Benchmarks.Infrastructure;

/// <summary>
/// What every console harness's entry point shares: a bad command line (an <see cref="ArgumentException"/>) prints its
/// message and exits with code 2, without a stack trace; anything else fails as it would.
/// </summary>
public static class HarnessProgram
{
    /// <summary>Runs a harness and returns its exit code (2 for a bad command line).</summary>
    public static int Run(Func<int> harness)
    {
        ArgumentNullException.ThrowIfNull(harness);
        try
        {
            return harness();
        }
        catch (ArgumentException ex)
        {
            Console.Error.WriteLine(ex.Message);
            return 2;
        }
    }

    /// <summary>
    /// The optional positional number at <paramref name="index"/> of a harness's command line, or
    /// <paramref name="fallback"/> when absent; anything else than a number of at least <paramref name="minimum"/>
    /// is a bad command line.
    /// </summary>
    public static double Number(IReadOnlyList<string> args, int index, string name, double fallback, double minimum, string usage)
    {
        ArgumentNullException.ThrowIfNull(args);
        if (args.Count > index + 1)
        {
            throw new ArgumentException($"Unexpected argument '{args[index + 1]}'. Usage: {usage}");
        }

        if (args.Count <= index)
        {
            return fallback;
        }

        return double.TryParse(args[index], NumberStyles.Float, CultureInfo.InvariantCulture, out var value) && value >= minimum
            ? value
            : throw new ArgumentException($"{name} must be a number of at least {minimum.ToString(CultureInfo.InvariantCulture)} (was '{args[index]}'). Usage: {usage}");
    }
}
