using System.Collections.Concurrent;
using System.Diagnostics;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace BoundedWork.Diagnostics.Internal;

/// <summary>
/// Keeps, per OS thread, the MVC action it runs now, from ASP.NET Core's own diagnostic events
/// (<c>Microsoft.AspNetCore.Mvc.BeforeAction</c> and <c>AfterAction</c> on the <c>Microsoft.AspNetCore</c>
/// listener): a blocked thread whose stack shows only MVC's compiled invoker (<c>dynamicClass.lambda_method3</c>: the
/// JIT inlined a small action into it) is named after its action and route. The OS thread id is the one the stack
/// samples carry. An app without MVC costs nothing but the subscription. The payloads are read by name (this package
/// does not depend on ASP.NET Core), each action's label once.
/// </summary>
internal sealed class ActionTracker : IObserver<DiagnosticListener>, IObserver<KeyValuePair<string, object?>>, IDisposable
{
    public const string ListenerName = "Microsoft.AspNetCore";
    public const string BeforeAction = "Microsoft.AspNetCore.Mvc.BeforeAction";
    public const string AfterAction = "Microsoft.AspNetCore.Mvc.AfterAction";

    private readonly ConcurrentDictionary<int, (object? Context, string Label)> _running = new();
    private readonly ConditionalWeakTable<object, string> _labels = [];
    private readonly List<IDisposable> _subscriptions = [];
    private readonly Lock _sync = new();
    private IDisposable? _all;
    private bool _disposed;

    private ActionTracker()
    {
    }

    /// <summary>Subscribes to ASP.NET Core's listener (now or when it is created); <see langword="null"/> on a platform without thread ids.</summary>
    public static ActionTracker? Start()
    {
        if (NativeThread.CurrentId <= 0)
        {
            return null;
        }

        var tracker = new ActionTracker();
        tracker._all = DiagnosticListener.AllListeners.Subscribe(tracker);
        return tracker;
    }

    /// <summary>The action each OS thread runs now.</summary>
    public IReadOnlyDictionary<int, string> Snapshot() => _running.ToDictionary(static e => e.Key, static e => e.Value.Label);

    public void Dispose()
    {
        lock (_sync)
        {
            _disposed = true;
            _all?.Dispose();
            foreach (var subscription in _subscriptions)
            {
                subscription.Dispose();
            }

            _subscriptions.Clear();
        }
    }

    void IObserver<DiagnosticListener>.OnNext(DiagnosticListener value)
    {
        if (value.Name != ListenerName)
        {
            return;
        }

        lock (_sync)
        {
            if (!_disposed)
            {
                _subscriptions.Add(value.Subscribe(this, static name => name is BeforeAction or AfterAction));
            }
        }
    }

    void IObserver<KeyValuePair<string, object?>>.OnNext(KeyValuePair<string, object?> value)
    {
        if (value.Value is not IReadOnlyList<KeyValuePair<string, object>> payload)
        {
            return;
        }

        object? action = null, context = null;
        foreach (var (key, item) in payload)
        {
            if (key == "ActionDescriptor")
            {
                action = item;
            }
            else if (key == "HttpContext")
            {
                context = item;
            }
        }

        var thread = NativeThread.CurrentId;
        if (value.Key == BeforeAction)
        {
            if (action is not null)
            {
                _running[thread] = (context, _labels.GetValue(action, Label));
            }

            return;
        }

        if (_running.TryGetValue(thread, out var entry) && ReferenceEquals(entry.Context, context))
        {
            _running.TryRemove(new KeyValuePair<int, (object?, string)>(thread, entry));
            return;
        }

        // An async action can end on another thread than it began on.
        foreach (var other in _running)
        {
            if (ReferenceEquals(other.Value.Context, context))
            {
                _running.TryRemove(other);
            }
        }
    }

    void IObserver<DiagnosticListener>.OnCompleted()
    {
    }

    void IObserver<DiagnosticListener>.OnError(Exception error)
    {
    }

    void IObserver<KeyValuePair<string, object?>>.OnCompleted()
    {
    }

    void IObserver<KeyValuePair<string, object?>>.OnError(Exception error)
    {
    }

    /// <summary>"OrdersController.Get (route orders/{id})", from the descriptor's display name and attribute route.</summary>
    private static string Label(object descriptor)
    {
        var type = descriptor.GetType();
        var display = type.GetProperty("DisplayName", BindingFlags.Public | BindingFlags.Instance)?.GetValue(descriptor) as string ?? type.Name;
        var route = type.GetProperty("AttributeRouteInfo", BindingFlags.Public | BindingFlags.Instance)?.GetValue(descriptor) is { } info
            ? info.GetType().GetProperty("Template", BindingFlags.Public | BindingFlags.Instance)?.GetValue(info) as string
            : null;
        return Diagnosis.ActionLabel(display, route);
    }
}

/// <summary>The OS id of the current thread, as stack samples carry it (Linux and Windows; -1 elsewhere).</summary>
internal static class NativeThread
{
    [ThreadStatic]
    private static int t_id;

    public static int CurrentId
    {
        get
        {
            var id = t_id;
            if (id == 0)
            {
                t_id = id = Read();
            }

            return id;
        }
    }

    private static int Read()
    {
        try
        {
            return OperatingSystem.IsLinux() ? NativeMethods.gettid() : OperatingSystem.IsWindows() ? NativeMethods.GetCurrentThreadId() : -1;
        }
        catch (EntryPointNotFoundException)
        {
            return -1;
        }
        catch (DllNotFoundException)
        {
            return -1;
        }
    }
}

internal static class NativeMethods
{
#pragma warning disable SYSLIB1054, CA1707 // a plain int, no marshalling: DllImport needs no unsafe code; the C name
    [DllImport("libc", EntryPoint = "gettid")]
    [DefaultDllImportSearchPaths(DllImportSearchPath.SafeDirectories)]
    public static extern int gettid();

    [DllImport("kernel32.dll")]
    [DefaultDllImportSearchPaths(DllImportSearchPath.System32)]
    public static extern int GetCurrentThreadId();
#pragma warning restore SYSLIB1054, CA1707
}
