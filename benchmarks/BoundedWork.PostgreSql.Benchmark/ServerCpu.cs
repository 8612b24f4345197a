using System.Globalization;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>
/// CPU time of the PostgreSQL server, all its processes: the postmaster's own and its reaped children's (utime,
/// stime, cutime, cstime of /proc/PID/stat) plus every live child's. Linux only; zero elsewhere. Resolution: one
/// clock tick (10 ms).
/// </summary>
internal static class ServerCpu
{
    private const double TicksPerSecond = 100; // USER_HZ: 100 on every Linux architecture .NET runs on.

    public static TimeSpan Read(string dataDirectory)
    {
        if (!OperatingSystem.IsLinux())
        {
            return TimeSpan.Zero;
        }

        try
        {
            var postmaster = int.Parse(File.ReadLines(Path.Combine(dataDirectory, "postmaster.pid")).First().Trim(), CultureInfo.InvariantCulture);
            long ticks = 0;
            if (Stat(postmaster) is { } own)
            {
                ticks += own.Utime + own.Stime + own.Cutime + own.Cstime;
            }

            foreach (var directory in Directory.EnumerateDirectories("/proc"))
            {
                if (int.TryParse(Path.GetFileName(directory), NumberStyles.Integer, CultureInfo.InvariantCulture, out var pid) && pid != postmaster
                    && Stat(pid) is { } child && child.Parent == postmaster)
                {
                    ticks += child.Utime + child.Stime;
                }
            }

            return TimeSpan.FromSeconds(ticks / TicksPerSecond);
        }
        catch (IOException)
        {
            return TimeSpan.Zero;
        }
    }

    private static (int Parent, long Utime, long Stime, long Cutime, long Cstime)? Stat(int pid)
    {
        string text;
        try
        {
            text = File.ReadAllText($"/proc/{pid}/stat");
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            return null; // Exited meanwhile.
        }

        // "pid (comm) state ppid ... utime(14) stime(15) cutime(16) cstime(17)"; comm may hold spaces and parentheses.
        var fields = text[(text.LastIndexOf(')') + 2)..].Split(' ');
        static long F(string[] f, int field) => long.Parse(f[field - 3], CultureInfo.InvariantCulture);
        return ((int)F(fields, 4), F(fields, 14), F(fields, 15), F(fields, 16), F(fields, 17));
    }
}
