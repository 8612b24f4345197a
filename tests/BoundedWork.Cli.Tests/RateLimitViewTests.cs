using System.Text.Json;
using BoundedWork.Cli.Rendering;
using Spectre.Console;

namespace BoundedWork.Cli.Tests;

/// <summary><c>bw show</c> prints an executor's rate limit when it has one, and nothing about it otherwise.</summary>
public sealed class RateLimitViewTests
{
    [Theory]
    [InlineData("""{"kind":"permitsPerSecond","limiter":null,"permitsPerSecond":50,"permitBurst":5,"waitingWorkers":2,"permitsAcquired":120,"permitsRefused":7,"waitTimeMs":1500}""", "50/s, burst 5, workers waiting for a permit 2, permits 120, refused 7")]
    [InlineData("""{"kind":"custom","limiter":"SlidingWindowRateLimiter","permitsPerSecond":0,"permitBurst":1,"waitingWorkers":0,"permitsAcquired":3,"permitsRefused":0,"waitTimeMs":0}""", "SlidingWindowRateLimiter, workers waiting for a permit 0")]
    [InlineData("""{"kind":"none","limiter":null,"permitsPerSecond":0,"permitBurst":1,"waitingWorkers":0,"permitsAcquired":0,"permitsRefused":0,"waitTimeMs":0}""", null)]
    public void Show_RateLimit_IsPrintedWhenInForce(string rateLimit, string? expected)
    {
        var json = JsonDocument.Parse($$"""{"name":"payments","isShutdown":false,"workers":{"busy":0,"live":1,"target":1,"max":8,"slow":0,"peak":1},"queue":{"length":0,"capacity":10,"oldestItemAgeMs":0,"waitingProducers":0},"settings":{"rejectionPolicy":"Abort"},"rates":{},"counters":{},"rateLimit":{{rateLimit}}}""").RootElement;
        var output = new StringWriter();
        var console = AnsiConsole.Create(new AnsiConsoleSettings { Ansi = AnsiSupport.No, ColorSystem = ColorSystemSupport.NoColors, Out = new AnsiConsoleOutput(output) });
        console.Profile.Width = 400;
        console.Write(Views.Executor(json));
        var text = output.ToString();
        if (expected is null)
        {
            Assert.DoesNotContain("rate limit", text, StringComparison.Ordinal);
        }
        else
        {
            Assert.Contains("rate limit", text, StringComparison.Ordinal);
            Assert.Contains(expected, text, StringComparison.Ordinal);
        }
    }
}
