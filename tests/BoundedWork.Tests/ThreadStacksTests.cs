using BoundedWork.Testing;

namespace BoundedWork.Tests;

/// <summary>The stack report a stuck test attaches to its failure (<see cref="ThreadStacks"/>).</summary>
[Collection(StarvationCollection.Name)]
public sealed class ThreadStacksTests
{
    [Fact]
    public void Capture_WhileThePoolIsStarved_ShowsAThreadBlockedWhereItWaits()
    {
        using var entered = new ManualResetEventSlim(false);
        using var gate = new ManualResetEventSlim(false);
        var blocked = new Thread(() => WaitAtTheGate(entered, gate)) { IsBackground = true, Name = "blocked on purpose" };
        blocked.Start();
        entered.Wait();
        try
        {
            string report;
            using (ThreadPoolStarvation.Begin())
            {
                report = ThreadStacks.Capture();
            }

            if (report.StartsWith("(no thread stacks: dotnet-stack is not installed", StringComparison.Ordinal))
            {
                // The tool is optional for a developer; CI installs it, and then the report must show the blocked thread.
                Assert.Null(Environment.GetEnvironmentVariable("BOUNDEDWORK_DOTNET_STACK"));
                return;
            }

            Assert.Contains(nameof(WaitAtTheGate), report, StringComparison.Ordinal);
        }
        finally
        {
            gate.Set();
            blocked.Join();
        }
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static void WaitAtTheGate(ManualResetEventSlim entered, ManualResetEventSlim gate)
    {
        entered.Set();
        gate.Wait();
    }
}
