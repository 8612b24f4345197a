using System.Globalization;
using System.Text.RegularExpressions;

namespace PaymentCallbacks.LoadDriver;

/// <summary>What <c>wrk --latency</c> printed, parsed.</summary>
internal sealed partial record WrkOutput(double RequestsPerSecond, long Requests, long Non2xx, long SocketErrors, double P50Ms, double P90Ms, double P99Ms, double MaxMs)
{
    /// <summary>Parses wrk's text output.</summary>
    /// <param name="text">The output.</param>
    /// <returns>The figures (zero where wrk printed none).</returns>
    public static WrkOutput Parse(string text)
    {
        double Percentile(string p) => Match(PercentileLine(), text, p) is { } v ? ToMs(v) : 0;
        var max = LatencyLine().Match(text) is { Success: true } m ? ToMs(m.Groups["max"].Value) : 0;
        var rps = RequestsPerSecondLine().Match(text) is { Success: true } r ? double.Parse(r.Groups[1].Value, CultureInfo.InvariantCulture) : 0;
        var requests = RequestsLine().Match(text) is { Success: true } q ? long.Parse(q.Groups[1].Value, CultureInfo.InvariantCulture) : 0;
        var non2xx = Non2xxLine().Match(text) is { Success: true } n ? long.Parse(n.Groups[1].Value, CultureInfo.InvariantCulture) : 0;
        long socket = 0;
        if (SocketErrorsLine().Match(text) is { Success: true } s)
        {
            for (var i = 1; i <= 4; i++)
            {
                socket += long.Parse(s.Groups[i].Value, CultureInfo.InvariantCulture);
            }
        }

        return new WrkOutput(rps, requests, non2xx, socket, Percentile("50"), Percentile("90"), Percentile("99"), max);
    }

    private static string? Match(Regex regex, string text, string percentile)
    {
        foreach (Match m in regex.Matches(text))
        {
            if (m.Groups["p"].Value == percentile)
            {
                return m.Groups["v"].Value;
            }
        }

        return null;
    }

    private static double ToMs(string value)
    {
        var m = DurationValue().Match(value);
        var number = double.Parse(m.Groups[1].Value, CultureInfo.InvariantCulture);
        return m.Groups[2].Value switch
        {
            "us" => number / 1000,
            "ms" => number,
            "s" => number * 1000,
            "m" => number * 60_000,
            "h" => number * 3_600_000,
            _ => number,
        };
    }

    [GeneratedRegex(@"^\s+(?<p>\d+)%\s+(?<v>[\d.]+\w+)\s*$", RegexOptions.Multiline)]
    private static partial Regex PercentileLine();

    [GeneratedRegex(@"^\s+Latency\s+\S+\s+\S+\s+(?<max>[\d.]+\w+)", RegexOptions.Multiline)]
    private static partial Regex LatencyLine();

    [GeneratedRegex(@"Requests/sec:\s+([\d.]+)")]
    private static partial Regex RequestsPerSecondLine();

    [GeneratedRegex(@"(\d+) requests in")]
    private static partial Regex RequestsLine();

    [GeneratedRegex(@"Non-2xx or 3xx responses:\s+(\d+)")]
    private static partial Regex Non2xxLine();

    [GeneratedRegex(@"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")]
    private static partial Regex SocketErrorsLine();

    [GeneratedRegex(@"([\d.]+)(\w+)")]
    private static partial Regex DurationValue();
}
