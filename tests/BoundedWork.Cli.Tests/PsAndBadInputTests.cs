using System.Globalization;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;

namespace BoundedWork.Cli.Tests;

/// <summary>bw ps with two apps at once, and every kind of bad input: a clear message and a non-zero exit, never a stack trace.</summary>
[Collection(ChildProcessCollection.Name)]
public sealed class PsAndBadInputTests(ITestOutputHelper output)
{
    [Fact]
    public async Task Ps_TwoProcesses_FindsBothAndTellsThemApart()
    {
        await using var first = await SampleApp.StartAsync(sideEffectMs: 1);
        await using var second = await SampleApp.StartAsync(sideEffectMs: 1);

        var json = await Bw.RunAsync("ps", "--json");
        var table = await Bw.RunAsync("ps");
        output.WriteLine(json.ToString());
        output.WriteLine(table.ToString());

        Assert.True(json.ExitCode == 0, json.ToString());
        var processes = JsonDocument.Parse(json.Out).RootElement.GetProperty("processes").EnumerateArray().ToList();
        foreach (var app in (SampleApp[])[first, second])
        {
            var row = Assert.Single(processes, p => p.GetProperty("processId").GetInt32() == app.ProcessId);
            Assert.Equal("ok", row.GetProperty("status").GetString());
            Assert.Equal("PaymentCallbacks", row.GetProperty("application").GetString());
            Assert.Equal(["payments"], row.GetProperty("executors").EnumerateArray().Select(e => e.GetString()));
            Assert.EndsWith($"{app.ProcessId}.sock", row.GetProperty("socket").GetString(), StringComparison.Ordinal);
            Assert.Contains(app.ProcessId.ToString(CultureInfo.InvariantCulture), table.Out, StringComparison.Ordinal);
        }

        // Each is addressed by its own id.
        var one = await Bw.RunAsync("threadpool", "-p", first.ProcessId.ToString(CultureInfo.InvariantCulture), "--json");
        Assert.True(one.ExitCode == 0, one.ToString());

        // Tables have no line that is blank but for spaces, and no line ends in spaces.
        var list = await Bw.RunAsync("list", "-p", first.ProcessId.ToString(CultureInfo.InvariantCulture));
        Assert.True(list.ExitCode == 0, list.ToString());
        foreach (var output in (string[])[table.Out, list.Out])
        {
            Assert.DoesNotContain(output.Split('\n'), line => line.Length > 0 && line.TrimEnd().Length < line.Length);
        }

        // Without one, the choice is ambiguous, not unreachable: its own message and exit code.
        var ambiguous = await Bw.RunAsync("list");
        output.WriteLine(ambiguous.ToString());
        Assert.True(ambiguous.ExitCode == 5, "Expected exit 5: " + ambiguous);
        Assert.Contains("ambiguous", ambiguous.Error, StringComparison.Ordinal);
        Assert.Contains("-p PID", ambiguous.Error, StringComparison.Ordinal);
    }

    [Fact]
    public async Task BadInput_AgainstARunningApp_ClearMessagesAndExitCodes()
    {
        await using var app = await SampleApp.StartAsync(sideEffectMs: 1);
        var pid = app.ProcessId.ToString(CultureInfo.InvariantCulture);

        Expect(await Bw.RunAsync("show", "nope", "-p", pid), 1, "nope");
        Expect(await Bw.RunAsync("resize", "nope", "4", "-p", pid), 1, "nope");
        Expect(await Bw.RunAsync("resize", "payments", "lots", "-p", pid), 2, "lots");
        Expect(await Bw.RunAsync("resize", "payments", "100000", "-p", pid), 1, "workers");
        Expect(await Bw.RunAsync("resize", "payments", "0", "-p", pid), 1, "workers");
        Expect(await Bw.RunAsync("set", "payments", "-p", pid), 2, "--queue-capacity");
        Expect(await Bw.RunAsync("set", "payments", "--policy", "Sometimes", "-p", pid), 1, "rejectionPolicy");
        Expect(await Bw.RunAsync("set", "payments", "--queue-capacity", "-5", "-p", pid), 1, "queueCapacity");
        Expect(await Bw.RunAsync("frobnicate"), 2, "frobnicate");

        // Nothing changed through all that.
        var show = await Bw.RunAsync("show", "payments", "-p", pid, "--json");
        var settings = JsonDocument.Parse(show.Out).RootElement.GetProperty("settings");
        Assert.Equal(8, settings.GetProperty("workers").GetInt32());
        Assert.Equal(2000, settings.GetProperty("queueCapacity").GetInt32());
    }

    [Theory]
    [InlineData("workers: 'lots' is not a whole number.", "resize", "payments", "lots")]
    [InlineData("workers: '99999999999' is too large for a whole number.", "resize", "payments", "99999999999")]
    [InlineData("--process-id: 'abc' is not a whole number.", "list", "-p", "abc")]
    [InlineData("--process-id: '1.5' is not a whole number.", "doctor", "-p", "1.5")]
    [InlineData("--timeout: 'soon' is not a number of seconds", "list", "--timeout", "soon")]
    [InlineData("--timeout: a number of seconds is finite (was Infinity).", "list", "--timeout", "1e999")]
    [InlineData("--duration: a number of seconds is finite (was NaN).", "doctor", "--duration", "NaN")]
    [InlineData("--iterations: 'forever' is not a whole number.", "top", "-n", "forever")]
    [InlineData("--interval: 'fast' is not a number of seconds", "top", "--interval", "fast")]
    [InlineData("--workers: 'x' is not a whole number.", "set", "payments", "--workers", "x")]
    [InlineData("--queue-capacity: '5e3' is not a whole number.", "set", "payments", "--queue-capacity", "5e3")]
    [InlineData("--adaptive-max: '' is not a whole number.", "set", "payments", "--adaptive-max", "")]
    [InlineData("--limit: 'all' is not a whole number.", "dead-letters", "list", "payments", "--limit", "all")]
    public async Task BadNumber_NamesTheOptionAndTheValue_NeverADotNetType(string message, params string[] args)
    {
        var run = await Bw.RunAsync(args);

        Assert.True(run.ExitCode == 2, run.ToString());
        Assert.Contains(message, run.Error, StringComparison.Ordinal);
        Assert.DoesNotContain("System.", run.Error, StringComparison.Ordinal); // not 'as expected type System.Int32'
    }

    [Fact]
    public async Task BadInput_DeadProcessOrNotOurSocket_Unreachable()
    {
        Expect(await Bw.RunAsync("list", "-p", "999999999"), 3, "No process 999999999");
        Expect(await Bw.RunAsync("doctor", "-p", "999999999"), 3, "No process 999999999");
        Expect(await Bw.RunAsync("list", "--socket", Path.Combine(Path.GetTempPath(), $"bw-none-{Guid.NewGuid():N}.sock")), 3, "no socket");

        // A stale socket: bound, nobody listening.
        var stale = Path.Combine(Path.GetTempPath(), $"bw-stale-{Guid.NewGuid():N}.sock");
        using (var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified))
        {
            socket.Bind(new UnixDomainSocketEndPoint(stale));
            Expect(await Bw.RunAsync("list", "--socket", stale), 3, "Nothing listens");
        }

        // Another program's socket: it answers garbage, or nothing at all.
        foreach (var answer in (string?[])["SSH-2.0-OpenSSH_9.2\r\n", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>hi</html>", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{not json", null])
        {
            using var server = new FakeServer(answer);
            Expect(await Bw.RunAsync("list", "--socket", server.Path), 3, "does not speak the BoundedWork admin API");
        }
    }

    private void Expect(BwResult run, int exitCode, string mention)
    {
        output.WriteLine(run.ToString());
        Assert.True(run.ExitCode == exitCode, $"Expected exit {exitCode}: " + run);
        Assert.Contains(mention, run.Error, StringComparison.OrdinalIgnoreCase);
        Assert.DoesNotContain("   at ", run.Error, StringComparison.Ordinal);
        Assert.DoesNotContain("Unhandled exception", run.Error, StringComparison.Ordinal);
    }

    /// <summary>A Unix socket server that is not BoundedWork: it reads the request and answers fixed bytes, or just closes.</summary>
    private sealed class FakeServer : IDisposable
    {
        private readonly Socket _listener = new(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        private readonly Thread _thread;

        public FakeServer(string? answer)
        {
            Path = System.IO.Path.Combine(System.IO.Path.GetTempPath(), $"bw-fake-{Guid.NewGuid():N}.sock");
            _listener.Bind(new UnixDomainSocketEndPoint(Path));
            _listener.Listen(4);
            _thread = new Thread(() =>
            {
                try
                {
                    while (true)
                    {
                        using var client = _listener.Accept();
                        client.Receive(new byte[4096]);
                        if (answer is not null)
                        {
                            client.Send(Encoding.ASCII.GetBytes(answer));
                        }

                        client.Shutdown(SocketShutdown.Both);
                    }
                }
                catch (Exception e) when (e is SocketException or ObjectDisposedException)
                {
                    // Disposed.
                }
            }) { IsBackground = true };
            _thread.Start();
        }

        public string Path { get; }

        public void Dispose()
        {
            _listener.Dispose();
            _thread.Join(Limits.Safety);
        }
    }
}
